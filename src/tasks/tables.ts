export interface ProjectsTable {
  id: string;
  name: string;
  description: string | null;
  created_by: string;
  created_at: number;
  updated_at: number;
}

export interface TasksTable {
  id: string;
  project_id: string | null;
  title: string;
  description: string | null;
  status: string;
  assigned_to: string | null;
  priority: string;
  /** Dependencies whose task is not done; the task is blocked while this is above 0. */
  open_dependencies: number;
  /** JSON array of the ids this task depends on (a copy of its task_dependencies rows, oldest first). */
  depends_on: string;
  created_by: string;
  created_at: number;
  updated_at: number;
}

export interface TaskDependenciesTable {
  id: string;
  task_id: string;
  depends_on: string;
  created_by: string;
  created_at: number;
}

export interface TaskCommentsTable {
  id: string;
  task_id: string;
  author: string;
  content: string;
  created_at: number;
}

export interface TaskActivityTable {
  id: string;
  task_id: string;
  actor: string;
  action: string;
  from_value: string | null;
  to_value: string | null;
  created_at: number;
}

/** The tasks tables as Kysely sees them; db/schema.ts joins every domain's into one Database. */
export interface TasksTables {
  projects: ProjectsTable;
  tasks: TasksTable;
  task_dependencies: TaskDependenciesTable;
  task_comments: TaskCommentsTable;
  task_activity: TaskActivityTable;
}
