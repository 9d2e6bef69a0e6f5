/** Every Kafka name of one Shoal installation, derived from one prefix (DESIGN §4). */
export interface StoreNames {
  readonly prefix: string
  readonly resourcesTopic: string
  readonly statusTopic: string
  readonly placementsTopic: string
  readonly contractsTopic: string
  readonly membersTopic: string
  readonly controllersTopic: string
  readonly controllersGroup: string
  bucketTransactionalId(bucket: number): string
  readonly schedulerTransactionalId: string
}

export const DEFAULT_PREFIX = 'shoal'

export function storeNames(prefix: string = DEFAULT_PREFIX): StoreNames {
  if (!/^[a-zA-Z0-9._-]{1,100}$/.test(prefix)) {
    throw new Error(`prefix "${prefix}" may hold only letters, digits, '.', '_' and '-' (1 to 100 characters)`)
  }
  return Object.freeze({
    prefix,
    resourcesTopic: `${prefix}.resources`,
    statusTopic: `${prefix}.status`,
    placementsTopic: `${prefix}.placements`,
    contractsTopic: `${prefix}.contracts`,
    membersTopic: `${prefix}.members`,
    controllersTopic: `${prefix}.controllers`,
    controllersGroup: `${prefix}-controllers`,
    bucketTransactionalId: (bucket: number) => `${prefix}-bucket-${bucket}`,
    schedulerTransactionalId: `${prefix}-scheduler`
  })
}
