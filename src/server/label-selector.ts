// The selector grammar is the CLI's (kubectl's); the server matches it against labels.
import { parseSelector } from '../cli/selector.ts'
import type { Requirement } from '../cli/selector.ts'

export { parseSelector }

export function matchesSelector(
  requirements: readonly Requirement[],
  labels: Readonly<Record<string, string>>
): boolean {
  return requirements.every(r => {
    const value = labels[r.key]
    switch (r.op) {
      case 'equals':
        return value === r.value
      case 'notEquals':
        return value !== r.value
      case 'in':
        return value !== undefined && r.values.includes(value)
      case 'notIn':
        return value === undefined || !r.values.includes(value)
      case 'exists':
        return value !== undefined
      case 'notExists':
        return value === undefined
    }
  })
}
