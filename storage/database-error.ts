/** A failed statement, with its SQLSTATE when the database gave one (e.g. 23505 unique). */
export class DatabaseError extends Error {
  readonly sqlState: string | undefined;
  constructor(message: string, sqlState?: string) {
    super(message);
    this.name = 'DatabaseError';
    this.sqlState = sqlState;
  }
}

export const UNIQUE_VIOLATION = '23505';
