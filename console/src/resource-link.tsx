import { Link } from '@tanstack/react-router';
import type { ReactNode } from 'react';
import { resourcePage } from './resource-pages.js';
import { useSession } from './session.js';

/** A resource the API names by type and id, linked to its page where the console has one this principal may open. */
export function ResourceLink({
  resource,
  children = <code>{resource.id}</code>,
}: {
  resource: { type: string; id: string };
  children?: ReactNode;
}) {
  const { can } = useSession();
  const page = resourcePage(resource);
  if (!page || (page.needs && !can(page.needs))) return <>{children}</>;
  const { needs: _needs, ...link } = page;
  return <Link {...link}>{children}</Link>;
}
