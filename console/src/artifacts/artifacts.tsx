import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { useId, useRef, useState, type FormEvent } from 'react';
import type { Result } from '../../../src/client/browser.js';
import { ErrorNotice } from '../errors.js';
import { ListBody } from '../list-body.js';
import { filterText, FilterForm, TextFilter } from '../filter-fields.js';
import { formatBytes, pageWindow, relativeTime } from '../format.js';
import { useLiveRefresh } from '../live.js';
import { Pager } from '../pager.js';
import { useSession } from '../session.js';
import { Table } from '../table.js';
import { queryKeys } from '../query-keys.js';
import './artifacts.css';

export interface ArtifactsSearch {
  page?: number;
  /** A MIME type, exact or `type/*`. */
  type?: string;
  /** A JSON object every listed artifact's metadata contains. */
  metadata?: string;
}

const PAGE_SIZE = 25;
export const ARTIFACT_EVENTS = ['artifact.*'];

/** Every artifact the signed-in key may read, filtered by type and metadata, with an upload form. */
export function ArtifactsView({ search }: { search: ArtifactsSearch }) {
  const { client, can } = useSession();
  const navigate = useNavigate({ from: '/artifacts' });
  const queryClient = useQueryClient();
  const filters = { content_type: search.type, metadata: search.metadata };
  const offset = ((search.page ?? 1) - 1) * PAGE_SIZE;
  useLiveRefresh({ queryKey: queryKeys.artifacts.all, events: ARTIFACT_EVENTS });
  const artifacts = useQuery({
    queryKey: queryKeys.artifacts.list({ offset, ...filters }),
    queryFn: () => client.artifacts.list.page({ query: { limit: PAGE_SIZE, offset, ...filters } }),
    placeholderData: keepPreviousData,
  });
  const total = artifacts.data?.total ?? 0;
  const span = pageWindow(search.page ?? 1, PAGE_SIZE, total);
  const filtered = search.type !== undefined || search.metadata !== undefined;

  return (
    <section>
      <h1>Artifacts</h1>
      {can('artifacts:write') && (
        <FileUpload
          title="Upload an artifact"
          action="Upload"
          upload={(form) => client.artifacts.upload({ body: form })}
          onDone={(artifact) => {
            void queryClient.invalidateQueries({ queryKey: queryKeys.artifacts.all });
            void navigate({ to: '/artifacts/$artifactId', params: { artifactId: artifact.id } });
          }}
          withName
        />
      )}
      <ArtifactFilters
        key={JSON.stringify(filters)}
        search={search}
        onApply={(next) => void navigate({ search: { ...next, page: undefined } })}
      />
      <ListBody
        query={artifacts}
        total={total}
        unmatched={filtered ? { noun: 'artifact', to: '/artifacts' } : null}
        empty={
          <>
            <p>
              <strong>No artifacts yet.</strong> Upload a file above, or have an agent store one with <code>POST /api/v1/artifacts</code>{' '}
              (the SDK's <code>artifacts.upload</code>).
            </p>
          </>
        }
      >
        <Table columns={['Name', 'Type', 'Size', 'Version', 'Owner', 'Updated']}>
          {artifacts.data?.items.map((artifact) => (
            <tr key={artifact.id} data-artifact={artifact.id}>
              <th scope="row">
                <Link to="/artifacts/$artifactId" params={{ artifactId: artifact.id }}>
                  {artifact.name}
                </Link>
              </th>
              <td>
                <code>{artifact.content_type}</code>
              </td>
              <td>{formatBytes(artifact.size_bytes)}</td>
              <td>v{artifact.version}</td>
              <td>
                <code>{artifact.owner}</code>
              </td>
              <td>
                <time dateTime={artifact.updated_at} title={artifact.updated_at}>
                  {relativeTime(artifact.updated_at, artifacts.dataUpdatedAt)}
                </time>
              </td>
            </tr>
          ))}
        </Table>
        <Pager span={span} total={total} noun="artifacts" onPage={(page) => void navigate({ search: { ...search, page } })} />
      </ListBody>
    </section>
  );
}

/** The artifacts' filters, applied into the URL. */
function ArtifactFilters({ search, onApply }: { search: ArtifactsSearch; onApply(filters: ArtifactsSearch): void }) {
  const [type, setType] = useState(search.type ?? '');
  const [metadata, setMetadata] = useState(search.metadata ?? '');
  return (
    <FilterForm label="Filter artifacts" onApply={() => onApply({ type: filterText(type), metadata: filterText(metadata) })}>
      <TextFilter label="Content type" value={type} onChange={setType} placeholder="image/*" />
      <TextFilter
        label="Metadata contains"
        value={metadata}
        onChange={setMetadata}
        placeholder='{"project": "alpha"}'
        className="metadata-filter"
      />
    </FilterForm>
  );
}

type Uploaded = Result<'artifacts.upload'>;

interface FileUploadProps {
  title: string;
  action: string;
  /** Sends the form (the part `file`, and `name` when given). */
  upload(form: FormData): Promise<Uploaded>;
  onDone(artifact: Uploaded): void;
  /** Offer a name field (a new artifact; a version keeps the artifact's name). */
  withName?: boolean;
}

/** A file picked from the computer, sent as multipart/form-data through the SDK: a new artifact or a new version. */
export function FileUpload({ title, action, upload, onDone, withName = false }: FileUploadProps) {
  const id = useId();
  const fileInput = useRef<HTMLInputElement>(null);
  const [name, setName] = useState('');
  const [file, setFile] = useState<File | null>(null);
  const send = useMutation({
    mutationFn: (form: FormData) => upload(form),
    onSuccess: (artifact) => {
      setName('');
      setFile(null);
      if (fileInput.current) fileInput.current.value = '';
      onDone(artifact);
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!file) return;
    const form = new FormData();
    if (withName && name.trim()) form.append('name', name.trim());
    form.append('file', file, file.name);
    send.mutate(form);
  };
  return (
    <form className="card file-upload" onSubmit={submit} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{title}</h2>
      <div className="fields">
        <label>
          File
          <input ref={fileInput} type="file" required onChange={(event) => setFile(event.target.files?.[0] ?? null)} />
        </label>
        {withName && (
          <label>
            Name
            <input value={name} onChange={(event) => setName(event.target.value)} placeholder={file?.name ?? 'the file name'} />
          </label>
        )}
      </div>
      <button type="submit" disabled={send.isPending || !file}>
        {send.isPending ? 'Uploading…' : action}
      </button>
      <ErrorNotice error={send.error} />
    </form>
  );
}
