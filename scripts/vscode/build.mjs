// Bundle the extension with esbuild into extension/out/extension.js (vscode stays external).
// Usage: node scripts/vscode/build.mjs [--watch] [--production]
import * as esbuild from "esbuild";

const watch = process.argv.includes("--watch");
const production = process.argv.includes("--production");

const options = {
  entryPoints: ["extension/src/extension.ts"],
  bundle: true,
  outfile: "extension/out/extension.js",
  platform: "node",
  format: "cjs",
  target: "node18",
  external: ["vscode"],
  sourcemap: production ? false : "linked",
  minify: production,
  logLevel: "info",
};

if (watch) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
} else {
  await esbuild.build(options);
}
