import assert from 'node:assert/strict'
import { test } from 'node:test'
import { serverErrorLine, statusFromResponse, statusText } from '../../src/cli/api-status.ts'

test('reads a Kubernetes Status body', () => {
  const status = statusFromResponse(
    422,
    'Unprocessable Entity',
    {
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      reason: 'Invalid',
      code: 422,
      message: 'KafkaSource default/x is invalid',
      details: {
        causes: [
          { field: 'spec.sink', message: 'required', reason: 'FieldValueRequired' },
          { field: 'spec.topics', message: 'must not be empty' }
        ]
      }
    },
    ''
  )
  assert.equal(status.reason, 'Invalid')
  assert.equal(
    statusText(status),
    'KafkaSource default/x is invalid: spec.sink: required; spec.topics: must not be empty'
  )
})

test('causes already in the message are not repeated; the missing ones are added', () => {
  const base = { code: 422, reason: 'Invalid', message: 'KafkaSource default/x is invalid: spec.sink: required' }
  assert.equal(statusText({ ...base, causes: [{ field: 'spec.sink', message: 'required' }] }), base.message)
  assert.equal(
    statusText({
      ...base,
      causes: [
        { field: 'spec.sink', message: 'required' },
        { field: 'spec.a', message: 'bad' }
      ]
    }),
    `${base.message}; spec.a: bad`
  )
})

test('a body that is not a Status still gives a readable error with a reason from the HTTP code', () => {
  const status = statusFromResponse(502, 'Bad Gateway', undefined, '<html>proxy error</html>')
  assert.equal(
    serverErrorLine(status),
    'Error from server (InternalError): the server responded with 502 Bad Gateway: <html>proxy error</html>'
  )
  assert.equal(statusFromResponse(404, 'Not Found', { message: 'x' }, '').reason, 'NotFound')
})
