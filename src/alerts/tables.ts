/** An alert rule: a condition the server evaluates, and the channels told of its alerts. */
export interface AlertRulesTable {
  /** `alr_…` */
  id: string;
  name: string;
  /** The condition's `type`, also inside `condition` (rules are grouped by it when evaluated). */
  condition_type: string;
  /** The condition as JSON. */
  condition: string;
  severity: string;
  /** JSON array of notification channel ids. */
  channels: string;
  /** 0: notify once per transition; otherwise re-notify this often while firing (unacknowledged). */
  repeat_interval_s: number;
  enabled: number;
  /** No notifications before this time (alerts still fire, resolve and are logged); null: none. */
  silenced_until: number | null;
  created_by: string;
  created_at: number;
  updated_at: number;
}

/** One firing of a rule: `firing` until the condition no longer holds, then `resolved`. */
export interface AlertsTable {
  /** `alt_…` */
  id: string;
  rule_id: string;
  state: string;
  severity: string;
  /** What the condition measured when it last fired (a count, seconds). */
  value: number;
  /** What it is about (the agent, routine, plan…), when the condition names one. */
  detail: string | null;
  fired_at: number;
  resolved_at: number | null;
  /** The last notification sent for it (its firing or a repeat); null while silenced. */
  notified_at: number | null;
  acknowledged_at: number | null;
  acknowledged_by: string | null;
}

/** The alerts tables as Kysely sees them; db/schema.ts joins every domain's into one Database. */
export interface AlertsTables {
  alert_rules: AlertRulesTable;
  alerts: AlertsTable;
}
