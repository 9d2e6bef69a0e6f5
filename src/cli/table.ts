/** How cells are laid out: kubectl's tables use padding 3 and minimum width 6; `describe` uses padding 2. */
export interface AlignOptions {
  readonly padding: number
  readonly minWidth: number
}

export const tableLayout: AlignOptions = Object.freeze({ padding: 3, minWidth: 6 })
export const describeLayout: AlignOptions = Object.freeze({ padding: 2, minWidth: 0 })

/**
 * Lays out rows of cells as Go's text/tabwriter does, which is what kubectl prints through: a cell is
 * padded to its column's width when another cell follows it on the line; a column's width is set by the
 * block of consecutive lines that have a cell there, so a line with fewer cells ends the alignment block
 * (which is how `describe` aligns each section on its own). The last cell of a line is never padded.
 */
export function alignRows(rows: readonly (readonly string[])[], options: AlignOptions): string[] {
  const out = rows.map(() => '')
  layout(rows, out, 0, 0, rows.length, options)
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] ?? []
    const last = row[row.length - 1]
    if (last !== undefined) out[i] += last
  }
  return out.map(line => line.trimEnd())
}

function layout(
  rows: readonly (readonly string[])[],
  out: string[],
  column: number,
  from: number,
  to: number,
  options: AlignOptions
): void {
  let line = from
  while (line < to) {
    if (!hasPaddedCell(rows[line], column)) {
      line++
      continue
    }
    const start = line
    let width = options.minWidth
    while (line < to && hasPaddedCell(rows[line], column)) {
      const cell = rows[line]?.[column] ?? ''
      width = Math.max(width, displayWidth(cell) + options.padding)
      line++
    }
    for (let i = start; i < line; i++) {
      const cell = rows[i]?.[column] ?? ''
      out[i] += cell + ' '.repeat(width - displayWidth(cell))
    }
    layout(rows, out, column + 1, start, line, options)
  }
}

/** A cell is padded (tab-terminated, in tabwriter's terms) when it is not the last one on its line. */
function hasPaddedCell(row: readonly string[] | undefined, column: number): boolean {
  return row !== undefined && column < row.length - 1
}

function displayWidth(text: string): number {
  return [...text].length
}

/** A kubectl-style table: the header upper-cased, columns separated by at least three spaces. */
export function renderTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const lines = alignRows([headers.map(h => h.toUpperCase()), ...rows], tableLayout)
  return lines.map(line => `${line}\n`).join('')
}
