// Shared helpers with no dependencies: nothing here imports from elsewhere in src.
export { closeInOrder } from './close-in-order.ts'
export { deepFreeze } from './deep-freeze.ts'
export { notADuration, parseDuration } from './duration.ts'
export type { BareNumber } from './duration.ts'
export { RemoteClock } from './remote-clock.ts'
export { withTimeout } from './with-timeout.ts'
