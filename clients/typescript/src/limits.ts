/** Most messages one agent channel may hold unacknowledged credit for. */
export const MAX_CREDIT = 1000;
