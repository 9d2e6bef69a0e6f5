#!/usr/bin/env node
// The `shoal` executable. From a checkout it runs the TypeScript sources directly (Node.js strips the types),
// so there is no stale build to trip over; installed as a package (under node_modules, where Node.js does not
// strip types) it runs the build in dist/.
import { existsSync } from 'node:fs'
import module from 'node:module'

const [major = 0, minor = 0] = process.versions.node.split('.').map(Number)
if (major < 22 || (major === 22 && minor < 22)) {
  process.stderr.write(
    `shoal: Node.js 22.22 or newer is needed, this is ${process.versions.node}; ` +
      'run `npm run setup` and use ./shoal, which picks the Node.js it installs\n'
  )
  process.exit(1)
}
// Node.js's compile cache (in the OS temp directory; NODE_COMPILE_CACHE moves it, NODE_DISABLE_COMPILE_CACHE turns
// it off) keeps the compiled code, and for the sources their stripped JavaScript, keyed by content: a later
// start is faster and never loads the type stripper, about 20 MB of every process's memory.
module.enableCompileCache?.()
const source = new URL('../src/cli/main.ts', import.meta.url)
const fromCheckout = existsSync(source) && !source.pathname.includes('/node_modules/')
const entry = fromCheckout ? source : new URL('../dist/cli/main.js', import.meta.url)
const { main } = await import(entry.href)
// Every module is loaded now (main imports all commands): written at once, not at exit, which a dispatcher
// may never reach gracefully.
module.flushCompileCache?.()
process.exitCode = await main(process.argv.slice(2))
