import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

/**
 * Nothing breakwater needs: it bundles as it is (no serverExternalPackages), in routes,
 * proxy.ts and pages, with Turbopack and with webpack. The roots only say that this folder is
 * the app, not the repository around it (which has a lockfile of its own).
 * @type {import('next').NextConfig}
 */
const nextConfig = {
  turbopack: { root: here },
  outputFileTracingRoot: here,
};

export default nextConfig;
