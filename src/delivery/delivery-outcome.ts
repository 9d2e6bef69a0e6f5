// How one delivery ended. The consumer commits a record's offset on delivered, dead-lettered and dropped; never
// on aborted (the work was cancelled and the record must be delivered again).

export type DeliveryOutcome =
  /** The sink answered 2xx. */
  | { readonly kind: 'delivered'; readonly status: number; readonly attempts: number }
  /**
   * The sink refused the event or kept failing, and the dead letter sink took it. `status` is the dead letter
   * sink's 2xx; `sinkStatus` the sink's last status (absent after a network error or for a poison record).
   */
  | {
      readonly kind: 'dead-lettered'
      readonly status: number
      readonly sinkStatus?: number
      readonly reason: string
      readonly attempts: number
      readonly deadLetterAttempts: number
    }
  /** Given up with nowhere to put it: no dead letter sink (or its attempt limit reached). Always counted. */
  | {
      readonly kind: 'dropped'
      readonly sinkStatus?: number
      readonly reason: string
      readonly attempts: number
      readonly deadLetterAttempts: number
    }
  /** The signal aborted (shutdown, revoke) before the event was handled; it was not delivered. */
  | { readonly kind: 'aborted'; readonly attempts: number; readonly deadLetterAttempts: number }
