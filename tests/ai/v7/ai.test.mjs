// breakwater/ai on AI SDK 7 (language model specification v4, Node 22): the shared body in ../suite.mjs.
import * as ai from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import * as breakwater from 'breakwater';
import * as bwai from 'breakwater/ai';
import * as store from 'breakwater/store';
import * as adaptive from 'breakwater/adaptive';
import { suite } from '../suite.mjs';
import { fakeLlmTests } from '../fake-llm.mjs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

// The CommonJS copy of the package, a second copy in this process (as Next.js bundles one per layer).
const breakwaterCjs = createRequire(import.meta.url)('breakwater');

suite({ label: 'ai@7', ai, MockModel: MockLanguageModelV4, createAnthropic, createOpenAI, createGoogleGenerativeAI, breakwater, breakwaterCjs, bwai, store, adaptive });
// The package's `breakwater fake-llm` (its bin, installed here) against this version's providers.
fakeLlmTests({ label: 'ai@7', ai, createAnthropic, createOpenAI, bin: fileURLToPath(new URL('node_modules/.bin/breakwater', import.meta.url)) });
