#!/usr/bin/env node
// The `shoal` executable. From a checkout it runs the TypeScript sources directly (Node.js strips the types),
// so there is no stale build to trip over; installed as a package (under node_modules, where Node.js does not
// strip types) it runs the build in dist/.
import { existsSync } from 'node:fs'

const source = new URL('../src/cli/main.ts', import.meta.url)
const fromCheckout = existsSync(source) && !source.pathname.includes('/node_modules/')
const entry = fromCheckout ? source : new URL('../dist/cli/main.js', import.meta.url)
const { main } = await import(entry.href)
process.exitCode = await main(process.argv.slice(2))
