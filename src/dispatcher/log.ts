/** How the dispatcher folder's classes report what happens; the command passes a pino logger through it. */
export type DispatcherLog = (
  level: 'info' | 'warn' | 'error',
  message: string,
  fields?: Readonly<Record<string, unknown>>
) => void
