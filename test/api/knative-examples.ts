// Manifests from Knative's documentation (knative/docs), kept as the docs print them so that a Knative user's
// manifest is what these tests apply. Where the docs leave a placeholder (`<duration>`) or print broken
// indentation, the note says what was filled in or re-indented.

/** docs/eventing/sources/kafka-source/README.md — "Kafka event source" (event-source.yaml). */
export const kafkaSourceBasic = `
apiVersion: sources.knative.dev/v1beta1
kind: KafkaSource
metadata:
  name: kafka-source
spec:
  consumerGroup: knative-group
  bootstrapServers:
  - my-cluster-kafka-bootstrap.kafka:9092 # note the kafka namespace
  topics:
  - knative-demo-topic
  sink:
    ref:
      apiVersion: serving.knative.dev/v1
      kind: Service
      name: event-display
`

/** docs/eventing/sources/kafka-source/README.md — "Scaling". */
export const kafkaSourceScaling = `
    apiVersion: sources.knative.dev/v1beta1
    kind: KafkaSource
    metadata:
      name: kafka-source
    spec:
      consumerGroup: knative-group
      bootstrapServers:
      - my-cluster-kafka-bootstrap.kafka:9092 
      consumers: 12    # Number of replicas
      topics:
      - knative-demo-topic
      sink:
        ref:
          apiVersion: serving.knative.dev/v1
          kind: Service
          name: event-display
`

/** docs/eventing/sources/kafka-source/README.md — "Handling Delivery Failures"; placeholders filled in. */
export const kafkaSourceDelivery = `
    apiVersion: sources.knative.dev/v1beta1
    kind: KafkaSource
    metadata:
      name: kafka-source
    spec:
      consumerGroup: knative-group
      bootstrapServers:
      - my-cluster-kafka-bootstrap.kafka:9092 # note the kafka namespace
      topics:
      - knative-demo-topic
      delivery:
        deadLetterSink:
          ref:
            apiVersion: serving.knative.dev/v1
            kind: Service
            name: example-sink
        backoffDelay: PT0.5S
        backoffPolicy: exponential
        retry: 5
      sink:
        ref:
          apiVersion: serving.knative.dev/v1
          kind: Service
          name: event-display
`

/** docs/eventing/sources/kafka-source/README.md — "Specify the key deserializer"; re-indented (the docs lost it). */
export const kafkaSourceKeyType = `
apiVersion: sources.knative.dev/v1beta1
kind: KafkaSource
metadata:
  name: kafka-source
  labels:
    kafkasources.sources.knative.dev/key-type: int
spec:
  consumerGroup: knative-group
  bootstrapServers:
  - my-cluster-kafka-bootstrap.kafka:9092 # note the kafka namespace
  topics:
  - knative-demo-topic
  sink:
    ref:
      apiVersion: serving.knative.dev/v1
      kind: Service
      name: event-display
`

/** docs/eventing/sources/kafka-source/README.md — "Specify the initial offset"; re-indented. */
export const kafkaSourceInitialOffset = `
apiVersion: sources.knative.dev/v1beta1
kind: KafkaSource
metadata:
  name: kafka-source
spec:
  consumerGroup: knative-group
  initialOffset: earliest
  bootstrapServers:
  - my-cluster-kafka-bootstrap.kafka:9092 # note the kafka namespace
  topics:
  - knative-demo-topic
  sink:
    ref:
      apiVersion: serving.knative.dev/v1
      kind: Service
      name: event-display
`

/** docs/eventing/sources/kafka-source/README.md — "Connecting to a TLS-enabled Kafka Broker". */
export const kafkaSourceTls = `
    apiVersion: sources.knative.dev/v1beta1
    kind: KafkaSource
    metadata:
     name: kafka-source-with-tls
    spec:
     net:
       tls:
         enable: true
         cert:
           secretKeyRef:
             key: tls.crt
             name: kafka-secret
         key:
           secretKeyRef:
             key: tls.key
             name: kafka-secret
         caCert:
           secretKeyRef:
             key: caroot.pem
             name: cacert
     consumerGroup: knative-group
     bootstrapServers:
     - my-secure-kafka-bootstrap.kafka:443
     topics:
     - knative-demo-topic
     sink:
       ref:
         apiVersion: serving.knative.dev/v1
         kind: Service
         name: event-display
`

/** docs/eventing/sources/kafka-source/README.md — "Enabling SASL"; its `...` filled from the basic example. */
export const kafkaSourceSasl = `
    apiVersion: sources.knative.dev/v1beta1
    kind: KafkaSource
    metadata:
      name: example-source
    spec:
      bootstrapServers:
      - my-cluster-kafka-bootstrap.kafka:9092
      topics:
      - knative-demo-topic
      sink:
        ref:
          apiVersion: serving.knative.dev/v1
          kind: Service
          name: event-display
      net:
        sasl:
          enable: true
          user:
            secretKeyRef:
              name: my-sasl-secret
              key: user
          password:
            secretKeyRef:
              name: my-sasl-secret
              key: password
          type:
            secretKeyRef:
              name: my-sasl-secret
              key: saslType
        tls:
          enable: true
          caCert:
            secretKeyRef:
              name: my-sasl-secret
              key: ca.crt
`

/** docs/eventing/sources/ping-source/README.md — the YAML template, filled with the values the page suggests. */
export const pingSourceJson = `
apiVersion: sources.knative.dev/v1
kind: PingSource
metadata:
  name: test-ping-source
  namespace: pingsource-example
spec:
  schedule: "*/1 * * * *"
  contentType: "application/json"
  data: '{"message": "Hello world!"}'
  sink:
    ref:
      apiVersion: v1
      kind: Service
      name: event-display
`

/** docs/eventing/sources/ping-source/README.md — "YAML: binary data", filled in. */
export const pingSourceBinary = `
apiVersion: sources.knative.dev/v1
kind: PingSource
metadata:
  name: test-ping-source-binary
  namespace: pingsource-example
spec:
  schedule: "*/1 * * * *"
  contentType: "text/plain"
  dataBase64: "ZGF0YQ=="
  sink:
    ref:
      apiVersion: v1
      kind: Service
      name: event-display
`

/**
 * docs/eventing/sources/ping-source/reference.md — "Example: CloudEvent Overrides", its `...` filled in. The
 * docs write `additional: 42`, a YAML number; Shoal takes a scalar extension value as its string form.
 */
export const pingSourceCeOverrides = `
apiVersion: sources.knative.dev/v1
kind: PingSource
metadata:
  name: test-heartbeats
spec:
  schedule: "*/1 * * * *"
  sink:
    ref:
      apiVersion: v1
      kind: Service
      name: event-display
  ceOverrides:
    extensions:
      extra: this is an extra attribute
      additional: 42
`

/** docs/eventing/sources/ping-source/index.md (older docs) — PingSource under the retired v1beta2 API. */
export const pingSourceV1beta2 = `
apiVersion: sources.knative.dev/v1beta2
kind: PingSource
metadata:
  name: test-ping-source
spec:
  schedule: "*/1 * * * *"
  contentType: "application/json"
  data: '{"message": "Hello world!"}'
  sink:
    ref:
      apiVersion: v1
      kind: Service
      name: event-display
`
