export { runKafkaCommand } from './embedded/index.ts'
