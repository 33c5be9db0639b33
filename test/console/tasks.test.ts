import type { Page } from 'playwright-core';
import { expect, it } from 'vitest';
import { signIn, useBrowser, WAIT_MS } from '../helpers/browser.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

const CORE = '/core/api/v1';

describeEachDialect('the console: projects, the board and a task', (dialect) => {
  const server = useServer(dialect);
  const browser = useBrowser();

  const createProject = async (name: string) => {
    const res = await server.api.post(`${CORE}/projects`, { name, description: `${name}, for the console` });
    expect(res.status, res.text).toBe(201);
    return res.body.data as { id: string };
  };
  const createTask = async (body: Record<string, unknown>) => {
    const res = await server.api.post(`${CORE}/tasks`, body);
    expect(res.status, res.text).toBe(201);
    return res.body.data as { id: string; title: string };
  };
  const column = (page: Page, status: string) => page.locator(`section[data-status="${status}"]`);
  const titlesIn = (page: Page, status: string) => column(page, status).locator('li[data-task] a').allTextContents();

  it('says how to start when there is no project, then lists projects', async () => {
    const page = await browser.open();
    await signIn(page, server, '/console/tasks');
    await page.getByText('No projects yet.').waitFor({ timeout: WAIT_MS });
    await createProject('Launch');
    await page.reload();
    await page.getByRole('link', { name: 'Launch' }).waitFor({ timeout: WAIT_MS });
  });

  it('shows a project as a board by status, moving a task live when its status changes', async () => {
    const project = await createProject('Board');
    await createTask({ title: 'Design', project_id: project.id, status: 'done' });
    const build = await createTask({
      title: 'Build',
      project_id: project.id,
      status: 'in_progress',
      priority: 'high',
      assigned_to: 'builder',
    });
    const ship = await createTask({ title: 'Ship', project_id: project.id, depends_on: [build.id] });
    await createTask({ title: 'Review', project_id: project.id, status: 'review' });

    const page = await browser.open();
    await signIn(page, server, `/console/tasks/projects/${project.id}`);
    await page.getByRole('heading', { name: 'Board' }).waitFor({ timeout: WAIT_MS });
    await column(page, 'todo').getByText('Ship').waitFor({ timeout: WAIT_MS });
    await column(page, 'in_progress').getByText('Build', { exact: true }).waitFor({ timeout: WAIT_MS });
    await column(page, 'done').getByText('Design').waitFor({ timeout: WAIT_MS });
    expect(await column(page, 'todo').locator(`li[data-task="${ship.id}"]`).textContent()).toBe('Shipblocked');
    expect(await column(page, 'in_progress').locator(`li[data-task="${build.id}"]`).textContent()).toBe('Buildhighbuilder');
    expect(await page.getByRole('heading', { level: 2 }).allTextContents()).toEqual(['Todo (1)', 'In progress (1)', 'Done (1)']);

    // A custom status gets its column by name, kept in the URL.
    await page.getByLabel('Custom status').fill('review');
    await page.getByRole('button', { name: 'Add a column' }).click();
    await column(page, 'review').getByRole('link', { name: 'Review' }).waitFor({ timeout: WAIT_MS });
    expect(new URL(page.url()).searchParams.get('statuses')).toContain('review');

    expect((await server.api.patch(`${CORE}/tasks/${build.id}`, { status: 'done' })).status).toBe(200);
    await column(page, 'done').getByText('Build', { exact: true }).waitFor({ timeout: WAIT_MS });
    expect(await titlesIn(page, 'in_progress')).toEqual([]);
    expect(await column(page, 'todo').locator(`li[data-task="${ship.id}"]`).textContent()).toBe('Ship');
  });

  it('pages a long column on the server', async () => {
    const project = await createProject('Backlog');
    for (let i = 0; i < 23; i++) await createTask({ title: `Item ${String(i).padStart(2, '0')}`, project_id: project.id });
    const page = await browser.open();
    await signIn(page, server, `/console/tasks/projects/${project.id}`);
    await column(page, 'todo').getByText('Item 19').waitFor({ timeout: WAIT_MS });
    expect(await titlesIn(page, 'todo')).toHaveLength(20);
    await page.getByRole('button', { name: 'Show more (3 left)' }).click();
    await column(page, 'todo').getByText('Item 22').waitFor({ timeout: WAIT_MS });
    expect(await titlesIn(page, 'todo')).toHaveLength(23);
  });

  it('shows a task with its dependency, and a comment added through the API appears live', async () => {
    const project = await createProject('Detail');
    const upstream = await createTask({ title: 'Write the spec', project_id: project.id, status: 'in_progress' });
    const task = await createTask({
      title: 'Implement it',
      project_id: project.id,
      description: 'Line one\nLine two',
      depends_on: [upstream.id],
    });

    const page = await browser.open();
    await signIn(page, server, `/console/tasks/projects/${project.id}`);
    await page.getByRole('link', { name: 'Implement it' }).click();
    await page.getByRole('heading', { name: 'Implement it' }).waitFor({ timeout: WAIT_MS });
    const dependency = page.locator(`li[data-dependency="${upstream.id}"]`);
    await dependency.getByText('Write the spec').waitFor({ timeout: WAIT_MS });
    expect(await dependency.textContent()).toBe('Write the spec In progress');
    await page.getByText('No comments yet').waitFor();

    const comment = await server.api.post(`${CORE}/tasks/${task.id}/comments`, { content: 'Started on the parser' });
    expect(comment.status).toBe(201);
    await page.locator(`li[data-comment="${comment.body.data.id}"]`).getByText('Started on the parser').waitFor({ timeout: WAIT_MS });
    await page.getByRole('row', { name: /comment added/ }).waitFor({ timeout: WAIT_MS });

    // And one from the page, as the signed-in admin.
    await page.getByLabel('Add a comment').fill('Reviewed the plan');
    await page.getByRole('button', { name: 'Comment' }).click();
    await page.locator('li[data-comment]').getByText('Reviewed the plan').waitFor({ timeout: WAIT_MS });
    expect((await server.api.get(`${CORE}/tasks/${task.id}/comments`)).body.data.map((c: { content: string }) => c.content)).toEqual([
      'Started on the parser',
      'Reviewed the plan',
    ]);

    // The dependency done: the task is no longer blocked, live.
    await page.locator('.task-detail > .chips').getByText('blocked').waitFor();
    expect((await server.api.patch(`${CORE}/tasks/${upstream.id}`, { status: 'done' })).status).toBe(200);
    await dependency.getByText('Done').waitFor({ timeout: WAIT_MS });
    await page.locator('.task-detail > .chips').getByText('blocked').waitFor({ state: 'detached', timeout: WAIT_MS });
  });

  it('fits a 390 px wide phone: the board scrolls inside its own box', async () => {
    const project = await createProject('Phone');
    await createTask({ title: 'Small screen', project_id: project.id });
    const page = await browser.open({ width: 390, height: 844 });
    await signIn(page, server, `/console/tasks/projects/${project.id}`);
    await column(page, 'todo').getByText('Small screen').waitFor({ timeout: WAIT_MS });
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
  });
});
