export { ErrorCodes, ShoalError, invalid, isShoalError } from './shoal-error.ts'
export type { ErrorCode, FieldError, ShoalErrorOptions } from './shoal-error.ts'
