import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { describe, it } from 'node:test'

// docs/benchmarks.md leads with one table of current figures, a row per benchmark; the dated log behind it is
// docs/benchmarks-history.md. A bench:* script added without its row, or a row whose command cannot be run as
// written, fails here.

const docsDir = new URL('../../docs/', import.meta.url)
const read = (name: string): string => readFileSync(new URL(name, docsDir), 'utf8')

const COLUMNS = ['benchmark', 'command', 'machine', 'figure', 'goal', 'peer and ratio', 'measured', 'history']

/** A markdown table row's cells, trimmed (the table's cells hold no `|`). */
const cells = (line: string): string[] =>
  line
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split('|')
    .map(cell => cell.trim())

/** GitHub's anchor for a heading's text: lower case, punctuation dropped, spaces as hyphens. */
const slug = (heading: string): string =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-')

/** The anchors a markdown file's headings get, a repeated heading numbered as GitHub numbers it. */
const anchors = (markdown: string): Set<string> => {
  const seen = new Map<string, number>()
  const out = new Set<string>()
  for (const [, text = ''] of markdown.matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(text)
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    out.add(n === 0 ? base : `${base}-${n}`)
  }
  return out
}

/** The lines of the "Current figures" table, if the first section of the doc is that table. */
const currentFigures = (markdown: string): { header: string[]; rows: string[][]; end: number } => {
  const lines = markdown.split('\n')
  const first = lines.findIndex(line => line.startsWith('## '))
  assert.equal(lines[first], '## Current figures', 'the first section after the intro is "## Current figures"')
  let i = first + 1
  while (lines[i]?.trim() === '') i++
  assert.match(lines[i] ?? '', /^\|/, 'the "Current figures" section opens with its table')
  const table: string[] = []
  while (lines[i]?.startsWith('|')) table.push(lines[i++] ?? '')
  const [header = '', separator = '', ...rows] = table
  assert.match(separator, /^\|(\s*:?-+:?\s*\|)+$/, 'the table has a separator row')
  return { header: cells(header), rows: rows.map(cells), end: i }
}

describe('docs/benchmarks.md', () => {
  const doc = read('benchmarks.md')
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    scripts: Record<string, string>
  }
  const scripts = Object.keys(pkg.scripts).filter(name => name.startsWith('bench:'))
  // Parsed in each test, so a doc that does not lead with the table fails them all, each saying why.
  const rows = (): string[][] => currentFigures(doc).rows

  it('leads with the "Current figures" table and its columns', () => {
    const { header, rows } = currentFigures(doc)
    assert.deepEqual(header, COLUMNS)
    for (const row of rows) assert.equal(row.length, COLUMNS.length, row.join(' | '))
  })

  it('has a row for every bench:* script, and no row for a script that does not exist', () => {
    assert.ok(scripts.length > 0)
    const named = new Set(rows().map(row => /^`(bench:[a-z0-9-]+)`$/.exec(row[0] ?? '')?.[1]))
    assert.deepEqual(
      scripts.filter(script => !named.has(script)),
      []
    )
    assert.deepEqual(
      [...named].filter(script => script === undefined || !scripts.includes(script)),
      []
    )
  })

  it('gives every row the command that runs its own script, a figure and the date it was measured', () => {
    for (const row of rows()) {
      const [benchmark = '', command = '', , figure = '', , , measured = ''] = row
      const script = benchmark.replaceAll('`', '')
      assert.match(command, /^`npm run bench:/, `${script}: the command starts with \`npm run bench:\``)
      assert.ok(
        command.startsWith(`\`npm run ${script}\``) || command.startsWith(`\`npm run ${script} -- `),
        `${script}: the command runs ${script}, not ${command}`
      )
      assert.notEqual(figure, '', `${script}: a figure, or "not recorded"`)
      assert.match(measured, /^\d{4}-\d{2}-\d{2}$|^—$/, `${script}: the date measured`)
    }
  })

  it('links every row to a section that exists', () => {
    for (const row of rows()) {
      const history = row[COLUMNS.length - 1] ?? ''
      const links = [...history.matchAll(/\]\(([a-z-]+\.md)#([^)]+)\)/g)]
      assert.ok(links.length > 0, `${row[0]}: a link to where the figure comes from`)
      for (const [, file = '', anchor = ''] of links) {
        assert.ok(anchors(read(file)).has(anchor), `${row[0]}: ${file}#${anchor} is a heading`)
      }
    }
  })

  it('keeps the dated log in docs/benchmarks-history.md, and points to it', () => {
    assert.ok(existsSync(new URL('benchmarks-history.md', docsDir)), 'docs/benchmarks-history.md exists')
    assert.match(doc, /\]\(benchmarks-history\.md\)/)
  })

  it('keeps the section on sinks as users run them after the table', () => {
    const after = doc.split('\n').slice(currentFigures(doc).end).join('\n')
    assert.match(after, /^## Sinks as users run them \(issue 22\)$/m)
  })
})
