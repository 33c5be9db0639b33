import { createRootRoute, createRoute, createRouter, Outlet } from '@tanstack/react-router';

const rootRoute = createRootRoute({ component: () => <Outlet /> });
const overviewRoute = createRoute({ getParentRoute: () => rootRoute, path: '/', component: () => <h1>Switchboard</h1> });

export const router = createRouter({ routeTree: rootRoute.addChildren([overviewRoute]), basepath: '/console' });

declare module '@tanstack/react-router' {
  interface Register {
    router: typeof router;
  }
}
