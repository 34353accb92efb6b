/** Notification email (helper H2 fills this in). */
export const NOTIFICATIONS_OPERATIONS = {} as const;
