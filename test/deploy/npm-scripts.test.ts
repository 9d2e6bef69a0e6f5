import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'

// What the package's scripts promise a fresh machine whose Node.js is older than Shoal's: every npm script runs on
// the Node.js set-up installs (through a script of scripts/ that picks it), and `npm run up` installs only what
// running Shoal needs, never the test tools.

const root = new URL('../../', import.meta.url)
const read = (path: string): string => readFileSync(new URL(path, root), 'utf8')
const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts

describe('npm scripts', () => {
  it('every script runs through a script of scripts/ that puts the set-up Node.js first (a bare `node` may be 20)', () => {
    const bare = Object.entries(scripts).filter(([, command]) =>
      command.split('&&').some(part => !/^\s*bash scripts\/[\w-]+\.sh\b/.test(part))
    )
    assert.deepEqual(bare, [])
    for (const command of Object.values(scripts)) {
      for (const [, file] of command.matchAll(/bash (scripts\/[\w-]+\.sh)/g)) assert.ok(read(file!).length > 0, file)
    }
  })

  it('`npm run up` installs no browser, firewall tool or Python package; the test set-up does', () => {
    const up = read('scripts/up.sh')
    const setup = read('scripts/setup.sh')
    assert.doesNotMatch(up, /setup-test/)
    // Code lines only: the comments may say what is left to the test set-up.
    const code = setup
      .split('\n')
      .filter(line => !line.trimStart().startsWith('#'))
      .join('\n')
    assert.doesNotMatch(code, /\b(chromium|nftables|apt-get|pip3?)\b/)
    const testSetup = read('scripts/setup-test.sh')
    for (const tool of ['chromium', 'nftables', 'cloudevents']) assert.match(testSetup, new RegExp(tool))
    for (const runner of ['scripts/test.sh', 'scripts/test-faults.sh', 'scripts/test-lab.sh', '.ci/run']) {
      assert.match(read(runner), /scripts\/setup-test\.sh/, runner)
    }
  })
})
