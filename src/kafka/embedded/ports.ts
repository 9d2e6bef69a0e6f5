import { createServer } from 'node:net'
import { ErrorCodes, ShoalError } from '../../errors/index.ts'
import { LOOPBACK } from './config.ts'

function listen(port: number): Promise<{ port: number; close: () => Promise<void> }> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.once('error', reject)
    server.listen({ port, host: LOOPBACK, exclusive: true }, () => {
      const address = server.address()
      const bound = typeof address === 'object' && address !== null ? address.port : port
      resolve({ port: bound, close: () => new Promise(done => server.close(() => done())) })
    })
  })
}

/** Throws SHOAL_PORT_IN_USE (`port N is in use`) unless 127.0.0.1:port can be bound right now. */
export async function assertPortFree(port: number): Promise<void> {
  let bound
  try {
    bound = await listen(port)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'EADDRINUSE' || code === 'EACCES') {
      throw new ShoalError(ErrorCodes.PORT_IN_USE, `port ${port} is in use`, { cause: error })
    }
    throw error
  }
  await bound.close()
}

/** `count` distinct ports that are free on 127.0.0.1 now (all held open together, so they differ). */
export async function freePorts(count: number): Promise<number[]> {
  const held = []
  try {
    for (let i = 0; i < count; i++) held.push(await listen(0))
    return held.map(h => h.port)
  } finally {
    await Promise.all(held.map(h => h.close()))
  }
}
