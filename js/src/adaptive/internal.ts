// `breakwater/adaptive/internal`: the code of breakwater/adaptive, with the hook its runtime
// entries (js/entry/adaptive-*) call once they have loaded the adaptive module. Not documented
// for apps: `breakwater/adaptive` re-exports the public part (./index.ts) after that.
import { setAdaptive, type Exports } from 'breakwater/internal';
import { adaptiveOptions } from './options.js';
import { Slots } from '../breakers/slots.js';

export * from './index.js';

/** Hands the adaptive module and the concurrency limit's code to the main entry's breakers. */
export function setAdaptiveModule(exports: Exports): void {
  setAdaptive({ exports, options: adaptiveOptions, slots: (x, h, now) => new Slots(x, h, now) });
}
