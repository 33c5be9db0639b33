import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import type { Result, Switchboard } from '../../../src/client/browser.js';
import { mediaType, parseJson, previewOf, type Preview } from './artifact-preview.js';
import { CopyField } from '../copy-field.js';
import { ErrorNotice } from '../errors.js';
import { formatBytes, relativeTime } from '../format.js';
import { JsonView } from '../json-view.js';
import { useLiveRefresh } from '../live.js';
import { useSession } from '../session.js';
import { Table } from '../table.js';
import { ARTIFACT_EVENTS, FileUpload } from './artifacts.js';
import { queryKeys } from '../query-keys.js';
import './artifacts.css';

export interface ArtifactSearch {
  /** The version shown and previewed (default: the current one). */
  version?: number;
}

type Artifact = Result<'artifacts.get'>;
type Version = Result<'artifacts.listVersions'>['versions'][number];

/** One artifact: what it is, its versions, a preview, download, a share link and a new version. */
export function ArtifactDetailView({ artifactId, search }: { artifactId: string; search: ArtifactSearch }) {
  const { client, whoami, can } = useSession();
  const queryClient = useQueryClient();
  useLiveRefresh({ queryKey: queryKeys.artifacts.all, events: ARTIFACT_EVENTS });
  const artifact = useQuery({
    queryKey: queryKeys.artifacts.detail(artifactId),
    queryFn: () => client.artifacts.get({ path: { artifact_id: artifactId } }),
  });
  const versions = useQuery({
    queryKey: queryKeys.artifacts.versions(artifactId),
    queryFn: () => client.artifacts.listVersions({ path: { artifact_id: artifactId } }),
  });

  if (!artifact.data) {
    return (
      <section>
        <p>
          <Link to="/artifacts">← Artifacts</Link>
        </p>
        <h1>Artifact</h1>
        <ErrorNotice error={artifact.error} />
        {artifact.isPending && <p className="muted">Loading…</p>}
      </section>
    );
  }
  const current = artifact.data;
  const all = versions.data?.versions ?? [];
  const shown = all.find((v) => v.version === (search.version ?? current.version));
  // artifacts:write changes any artifact; an agent (confined to itself) only its own.
  const mayChange = can('artifacts:write') && (whoami.kind !== 'agent' || whoami.agent_id === current.owner);
  return (
    <section className="artifact-detail">
      <p>
        <Link to="/artifacts">← Artifacts</Link>
      </p>
      <h1>{current.name}</h1>
      <ErrorNotice error={artifact.error} />
      <ArtifactFacts artifact={current} />
      <h2>Versions</h2>
      <ErrorNotice error={versions.error} />
      <Table columns={['Version', 'Type', 'Size', 'Created', 'By', { label: 'Actions', visuallyHidden: true }]}>
        {all.map((version) => (
          <tr key={version.version} data-version={version.version} aria-current={version === shown ? 'true' : undefined}>
            <th scope="row">
              v{version.version}
              {version.version === current.version && <span className="badge">current</span>}
            </th>
            <td>
              <code>{version.content_type}</code>
            </td>
            <td>{formatBytes(version.size_bytes)}</td>
            <td>
              <time dateTime={version.created_at} title={version.created_at}>
                {relativeTime(version.created_at, versions.dataUpdatedAt)}
              </time>
            </td>
            <td>
              <code>{version.created_by}</code>
            </td>
            <td className="actions">
              {version === shown ? (
                <span className="muted">shown below</span>
              ) : (
                <Link to="/artifacts/$artifactId" params={{ artifactId }} search={{ version: version.version }}>
                  Show v{version.version}
                </Link>
              )}
            </td>
          </tr>
        ))}
      </Table>
      {mayChange && (
        <FileUpload
          title="Upload a new version"
          action="Upload version"
          upload={(form) => client.artifacts.uploadVersion({ path: { artifact_id: artifactId }, body: form })}
          onDone={() => void queryClient.invalidateQueries({ queryKey: queryKeys.artifacts.all })}
        />
      )}
      {/* Keyed: another version starts with no share link and a fresh preview. */}
      {shown && <VersionPanel key={shown.version} artifact={current} version={shown} />}
      {search.version !== undefined && versions.isSuccess && !shown && (
        <p className="notice">
          Version {search.version} does not exist (any more).{' '}
          <Link to="/artifacts/$artifactId" params={{ artifactId }}>
            Show the current one
          </Link>
        </p>
      )}
    </section>
  );
}

function ArtifactFacts({ artifact }: { artifact: Artifact }) {
  const hasMetadata = Object.keys(artifact.metadata).length > 0;
  return (
    <>
      <dl className="facts">
        <dt>Id</dt>
        <dd>
          <code>{artifact.id}</code>
        </dd>
        <dt>Owner</dt>
        <dd>
          <code>{artifact.owner}</code>
        </dd>
        <dt>Current version</dt>
        <dd>
          v{artifact.version}, <code>{artifact.content_type}</code>, {formatBytes(artifact.size_bytes)}
        </dd>
        <dt>SHA-256</dt>
        <dd>
          <code>{artifact.sha256}</code>
        </dd>
        <dt>Created</dt>
        <dd>{new Date(artifact.created_at).toLocaleString()}</dd>
        <dt>Updated</dt>
        <dd>{new Date(artifact.updated_at).toLocaleString()}</dd>
      </dl>
      {hasMetadata && (
        <>
          <h2>Metadata</h2>
          <JsonView value={artifact.metadata} label="Metadata" />
        </>
      )}
    </>
  );
}

/** The shown version: download, a share link, and its preview. */
function VersionPanel({ artifact, version }: { artifact: Artifact; version: Version }) {
  const preview = previewOf(version.content_type, version.size_bytes);
  return (
    <div className="card version-panel">
      <h2>
        Version {version.version}
        {version.version === artifact.version && ' (current)'}
      </h2>
      <div className="version-actions">
        <DownloadButton artifact={artifact} version={version.version} />
      </div>
      <ShareLink artifactId={artifact.id} version={version.version} />
      <h3>Preview</h3>
      <VersionPreview artifactId={artifact.id} version={version} preview={preview} />
    </div>
  );
}

/** A version's bytes through the SDK (with the key in a header), as a Blob. */
async function fetchVersion(client: Switchboard, artifactId: string, version: number): Promise<Blob> {
  const response = await client.artifacts.download({ path: { artifact_id: artifactId }, query: { version } });
  return response.blob();
}

/**
 * Downloads through the SDK into a Blob and saves it from an object URL: the key stays in the
 * request header, never in a URL a browser could keep in its history or a proxy in its logs.
 */
function DownloadButton({ artifact, version }: { artifact: Artifact; version: number }) {
  const { client } = useSession();
  const save = useMutation({
    mutationFn: async () => {
      const bytes = await fetchVersion(client, artifact.id, version);
      // As bytes to save, never a page: were the download attribute ignored, no SVG or HTML would open on this origin.
      const url = URL.createObjectURL(bytes.slice(0, bytes.size, 'application/octet-stream'));
      const link = document.createElement('a');
      link.href = url;
      link.download = artifact.name;
      link.click();
      // The download has read the URL by the next task; keeping it would hold the bytes in memory.
      setTimeout(() => URL.revokeObjectURL(url), 1_000);
    },
  });
  return (
    <>
      <button type="button" onClick={() => save.mutate()} disabled={save.isPending}>
        {save.isPending ? 'Downloading…' : `Download v${version}`}
      </button>
      <ErrorNotice error={save.error} />
    </>
  );
}

const EXPIRY_CHOICES = [
  { seconds: 3_600, label: '1 hour' },
  { seconds: 86_400, label: '1 day' },
  { seconds: 7 * 86_400, label: '7 days' },
] as const;

/** A signed URL that downloads this version without credentials until it expires. */
function ShareLink({ artifactId, version }: { artifactId: string; version: number }) {
  const { client } = useSession();
  const id = useId();
  const [expiresIn, setExpiresIn] = useState<number>(EXPIRY_CHOICES[1].seconds);
  const create = useMutation({
    mutationFn: () => client.artifacts.createSignedUrl({ path: { artifact_id: artifactId }, body: { expires_in: expiresIn, version } }),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  return (
    <form className="share-link" onSubmit={submit} aria-labelledby={`${id}-title`}>
      <h3 id={`${id}-title`}>Share link</h3>
      <p className="muted">Anyone with the link can download version {version} until it expires, without a key.</p>
      <div className="fields">
        <label>
          Expires in
          <select value={expiresIn} onChange={(event) => setExpiresIn(Number(event.target.value))}>
            {EXPIRY_CHOICES.map((choice) => (
              <option key={choice.seconds} value={choice.seconds}>
                {choice.label}
              </option>
            ))}
          </select>
        </label>
        <button type="submit" className="secondary" disabled={create.isPending}>
          Create link
        </button>
      </div>
      <ErrorNotice error={create.error} />
      {create.data && (
        <div role="status">
          <CopyField value={create.data.url} label="Share link" testId="share-link" />
          <p className="muted">
            Expires <time dateTime={create.data.expires_at}>{new Date(create.data.expires_at).toLocaleString()}</time>.
          </p>
        </div>
      )}
    </form>
  );
}

/** An image as the preview shows it: its bytes, and the size to show them at when they were redrawn. */
interface ShownImage {
  blob: Blob;
  size?: { width: number; height: number };
}

/** CSS's default object size: what a browser gives an image that states none (an SVG with only a viewBox). */
const DEFAULT_IMAGE_SIZE = { width: 300, height: 150 };
/** The longest side, in device pixels, of the PNG an image is redrawn as. */
const MAX_REDRAWN_SIDE = 4096;

/**
 * The image drawn onto a canvas, as a PNG. It is decoded as an image (which runs none of an SVG's
 * scripts) from an object URL that no element shows and that is revoked once drawn: what the page
 * then shows, and what "Open image in new tab" opens, is only the PNG.
 */
async function redrawn(blob: Blob, type: string): Promise<ShownImage> {
  const source = URL.createObjectURL(blob.slice(0, blob.size, type));
  try {
    const image = new Image();
    image.src = source;
    await image.decode();
    const width = image.naturalWidth || DEFAULT_IMAGE_SIZE.width;
    const height = image.naturalHeight || DEFAULT_IMAGE_SIZE.height;
    const scale = Math.min(window.devicePixelRatio || 1, MAX_REDRAWN_SIDE / Math.max(width, height));
    const canvas = document.createElement('canvas');
    canvas.width = Math.max(1, Math.round(width * scale));
    canvas.height = Math.max(1, Math.round(height * scale));
    canvas.getContext('2d')!.drawImage(image, 0, 0, canvas.width, canvas.height);
    const png = await new Promise<Blob | null>((resolve) => canvas.toBlob(resolve, 'image/png'));
    if (!png) throw new Error('The image could not be redrawn');
    return { blob: png, size: { width, height } };
  } finally {
    URL.revokeObjectURL(source);
  }
}

/** An image through an object URL that lives as long as the element shows it. */
function BlobImage({ image, alt, onError }: { image: ShownImage; alt: string; onError(): void }) {
  const element = useRef<HTMLImageElement>(null);
  useEffect(() => {
    const url = URL.createObjectURL(image.blob);
    element.current!.src = url;
    return () => URL.revokeObjectURL(url);
  }, [image]);
  return <img ref={element} className="image-preview" alt={alt} width={image.size?.width} height={image.size?.height} onError={onError} />;
}

function VersionPreview({ artifactId, version, preview }: { artifactId: string; version: Version; preview: Preview }) {
  const { client } = useSession();
  const previewable = preview.kind === 'json' || preview.kind === 'text' || preview.kind === 'image';
  // A version's bytes never change: its own key (outside ['artifacts'], which live updates refresh), never stale.
  const content = useQuery({
    queryKey: queryKeys.artifactContent(artifactId, version.version, version.sha256),
    queryFn: async (): Promise<{ image?: ShownImage | null; text?: string }> => {
      const blob = await fetchVersion(client, artifactId, version.version);
      if (preview.kind !== 'image') return { text: await blob.text() };
      // The object URL takes the version's media type, whatever the response said.
      const type = mediaType(version.content_type);
      if (!preview.redraw) return { image: { blob: blob.slice(0, blob.size, type) } };
      // null: the browser cannot decode it (shown as such, like a broken image).
      return { image: await redrawn(blob, type).catch(() => null) };
    },
    enabled: previewable,
    staleTime: Infinity,
  });
  const [brokenImage, setBrokenImage] = useState(false);

  if (preview.kind === 'none') {
    return <p className="muted">No preview for {version.content_type}: download it to open it.</p>;
  }
  if (preview.kind === 'too-large') {
    return (
      <p className="muted">
        No preview: this version is {formatBytes(version.size_bytes)}, over the preview limit of {formatBytes(preview.limit)}. Download it
        to open it.
      </p>
    );
  }
  if (content.error) return <ErrorNotice error={content.error} />;
  if (preview.kind === 'image') {
    const image = content.data?.image;
    if (brokenImage || image === null)
      return <p className="muted">The browser cannot show this {version.content_type} image: download it to open it.</p>;
    return image ? (
      <BlobImage image={image} alt={`Version ${version.version} of the artifact`} onError={() => setBrokenImage(true)} />
    ) : (
      <p className="muted">Loading…</p>
    );
  }
  const text = content.data?.text;
  if (text === undefined) return <p className="muted">Loading…</p>;
  const json = preview.kind === 'json' ? parseJson(text) : null;
  if (json) return <JsonView value={json.value} label="JSON preview" />;
  return (
    <>
      {preview.kind === 'json' && <p className="muted">This is not valid JSON; shown as text.</p>}
      <pre className="text-preview" aria-label="Text preview" tabIndex={0}>
        {text}
      </pre>
    </>
  );
}
