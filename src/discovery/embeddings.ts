/**
 * A client for an OpenAI-compatible embeddings endpoint (`POST {base}/v1/embeddings`), used to
 * blend semantic similarity into capability search when SWITCHBOARD_LLM_URL and
 * SWITCHBOARD_EMBEDDINGS_MODEL are set. Every call is bounded by a timeout; callers fall back
 * to lexical scores when it throws.
 */
export interface Embedder {
  readonly model: string;
  embed(texts: string[], signal?: AbortSignal): Promise<number[][]>;
}

export interface OpenAiEmbedderOptions {
  /** Base URL: `http://host:port` or `http://host:port/v1`. */
  url: string;
  model: string;
  apiKey?: string | null;
  timeoutMs?: number;
}

/** The embeddings URL for a configured base, with or without the `/v1` suffix. */
export function embeddingsUrl(base: string): string {
  const trimmed = base.replace(/\/+$/, '');
  return /\/v\d+$/.test(trimmed) ? `${trimmed}/embeddings` : `${trimmed}/v1/embeddings`;
}

export class OpenAiEmbedder implements Embedder {
  readonly model: string;
  private readonly url: string;
  private readonly apiKey: string | null;
  private readonly timeoutMs: number;

  constructor(options: OpenAiEmbedderOptions) {
    this.url = embeddingsUrl(options.url);
    this.model = options.model;
    this.apiKey = options.apiKey ?? null;
    this.timeoutMs = options.timeoutMs ?? 5000;
  }

  async embed(texts: string[], signal?: AbortSignal): Promise<number[][]> {
    if (texts.length === 0) return [];
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const response = await fetch(this.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(this.apiKey !== null ? { authorization: `Bearer ${this.apiKey}` } : {}),
      },
      body: JSON.stringify({ model: this.model, input: texts }),
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    if (!response.ok) throw new Error(`embeddings endpoint answered ${response.status}`);
    const body = (await response.json()) as { data?: { index?: number; embedding?: unknown }[] };
    if (!Array.isArray(body.data) || body.data.length !== texts.length) {
      throw new Error(`embeddings endpoint returned ${body.data?.length ?? 'no'} vectors for ${texts.length} inputs`);
    }
    const vectors: number[][] = new Array(texts.length);
    body.data.forEach((item, position) => {
      const index = typeof item.index === 'number' ? item.index : position;
      if (!Array.isArray(item.embedding) || item.embedding.some((v) => typeof v !== 'number') || index < 0 || index >= texts.length) {
        throw new Error('embeddings endpoint returned a malformed vector');
      }
      vectors[index] = item.embedding as number[];
    });
    return vectors;
  }
}
