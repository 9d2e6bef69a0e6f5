import { pino } from 'pino'

/** The structured logger every process uses (pino, JSON lines on stderr). */
export type Logger = pino.Logger

export function createLogger(name: string, level: string = process.env['SHOAL_LOG_LEVEL'] ?? 'info'): Logger {
  return pino({ name, level, base: { pid: process.pid } }, pino.destination(2))
}
