import http from 'node:http';

export interface PartialAnswer {
  /** 0 when the connection failed before an answer. */
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

export interface PartialRequest {
  request: http.ClientRequest;
  /** The answer, whenever it comes; never rejects. */
  answer: Promise<PartialAnswer>;
}

/**
 * Starts a request that declares `contentLength` body bytes and sends only `first` of them, as
 * a slow or stalled client does; the caller writes the rest, or not. One connection each.
 */
export function startPartialRequest(
  url: string,
  method: string,
  headers: Record<string, string>,
  contentLength: number,
  first: Buffer,
): PartialRequest {
  const request = http.request(url, { method, agent: false, headers: { ...headers, 'content-length': String(contentLength) } });
  const answer = new Promise<PartialAnswer>((resolve) => {
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      const done = () => resolve({ status: response.statusCode ?? 0, headers: response.headers, text: Buffer.concat(chunks).toString() });
      response.on('end', done);
      response.on('error', done);
    });
    request.on('error', () => resolve({ status: 0, headers: {}, text: '' }));
  });
  request.flushHeaders();
  if (first.length > 0) request.write(first);
  return { request, answer };
}
