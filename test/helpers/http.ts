// One HTTP request to a Shoal API (or any server under test) and its answer, JSON parsed when it is JSON.

export interface HttpAnswer {
  readonly status: number
  readonly body: any // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON under test
}

export async function http(
  method: string,
  url: string,
  body?: string,
  contentType = 'application/yaml'
): Promise<HttpAnswer> {
  const response = await fetch(url, {
    method,
    ...(body === undefined ? {} : { body, headers: { 'content-type': contentType } })
  })
  const text = await response.text()
  let parsed: unknown = text
  try {
    parsed = JSON.parse(text)
  } catch {
    // plain text answers (healthz)
  }
  return { status: response.status, body: parsed }
}
