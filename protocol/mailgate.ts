/** Operations of the email-only interface that every door offers (helper H4b fills this in). */
export const MAILGATE_OPERATIONS = {} as const;
