/** Every Kafka name of one Shoal installation, derived from one prefix (DESIGN §4). */
export interface StoreNames {
  readonly prefix: string
  readonly resourcesTopic: string
  readonly statusTopic: string
  readonly placementsTopic: string
  readonly contractsTopic: string
  readonly membersTopic: string
  readonly controllersTopic: string
  /** Each source's last delivery error, as a dispatcher saw it (compacted; key: the source key). */
  readonly deliveryErrorsTopic: string
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
    deliveryErrorsTopic: `${prefix}.delivery-errors`,
    controllersGroup: `${prefix}-controllers`,
    bucketTransactionalId: (bucket: number) => `${prefix}-bucket-${bucket}`,
    schedulerTransactionalId: `${prefix}-scheduler`
  })
}
