// Browsers and Deno: compiles the .wasm at `url` (fetched), or fails with an error that says what
// to check when a bundler did not carry the file along.
export async function compile(url) {
  try {
    return await WebAssembly.compileStreaming(fetch(url));
  } catch {
    // No streaming compile, or a server that does not send application/wasm.
  }
  try {
    const res = await fetch(url);
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    return await WebAssembly.compile(await res.arrayBuffer());
  } catch (e) {
    throw new Error(
      `breakwater: could not load its WebAssembly from ${url} (${e?.message ?? e}). The bundler ` +
        'must copy the .wasm that the entry references with new URL(..., import.meta.url) (Vite, ' +
        "webpack 5, Turbopack and Parcel do). Servers take the package's node entry, Cloudflare " +
        'Workers its workerd entry, Vercel Edge its edge-light entry: check the resolve conditions.',
      { cause: e },
    );
  }
}
