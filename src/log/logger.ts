import { pino } from 'pino'

/** The structured logger every process uses (pino, JSON lines on stderr). */
export type Logger = pino.Logger

export function createLogger(name: string, level: string = process.env['SHOAL_LOG_LEVEL'] ?? 'info'): Logger {
  return pino({ name, level, base: { pid: process.pid } }, pino.destination(2))
}

/**
 * How a part of Shoal reports what happens, without knowing the logger behind it: a process passes its pino logger
 * through a function of this shape, a test a recorder.
 */
export type Log = (
  level: 'info' | 'warn' | 'error',
  message: string,
  fields?: Readonly<Record<string, unknown>>
) => void
