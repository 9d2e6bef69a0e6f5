/**
 * The Apache Kafka version Shoal runs and tests against: the newest that @platformatic/kafka's own CI covers.
 * The one place it is pinned; scripts/lib.sh reads it from this line.
 */
export const KAFKA_VERSION = '4.2.0'
