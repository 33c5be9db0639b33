import { useNavigate, useSearch } from '@tanstack/react-router';
import { pageWindow, parsePage } from './format.js';

/**
 * One of several lists on a page, each paging on the server with its page number in the URL
 * under its own key (`?pending=2&dead=3`), so a reload or a shared link shows the same pages.
 */
export function usePageParam(key: string, pageSize: number) {
  const navigate = useNavigate();
  const search: Record<string, unknown> = useSearch({ strict: false });
  const page = search[key] === undefined ? 1 : parsePage(search[key]);
  return {
    offset: (page - 1) * pageSize,
    span: (total: number) => pageWindow(page, pageSize, total),
    onPage: (next: number) => void navigate({ to: '.', search: (previous) => ({ ...previous, [key]: next }), resetScroll: false }),
  };
}
