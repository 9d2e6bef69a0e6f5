#!/usr/bin/env node
// The `shoal` executable. From a checkout it runs the TypeScript sources directly (Node.js strips the types),
// so there is no stale build to trip over; installed as a package (under node_modules, where Node.js does not
// strip types) it runs the build in dist/.
import { existsSync } from 'node:fs'

const [major = 0, minor = 0] = process.versions.node.split('.').map(Number)
if (major < 22 || (major === 22 && minor < 22)) {
  process.stderr.write(
    `shoal: Node.js 22.22 or newer is needed, this is ${process.versions.node}; ` +
      'run `npm run setup` and use ./shoal, which picks the Node.js it installs\n'
  )
  process.exit(1)
}
const source = new URL('../src/cli/main.ts', import.meta.url)
const fromCheckout = existsSync(source) && !source.pathname.includes('/node_modules/')
const entry = fromCheckout ? source : new URL('../dist/cli/main.js', import.meta.url)
const { main } = await import(entry.href)
process.exitCode = await main(process.argv.slice(2))
