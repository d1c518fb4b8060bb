/** A failure, announced to screen readers as it appears. */
export function ErrorAlert({ message }: { message: string | null }) {
  if (message === null) return null;
  return (
    <p class="alert" role="alert">
      {message}
    </p>
  );
}

/** A success or progress note, announced politely. */
export function Status({ message }: { message: string | null }) {
  return (
    <p class="status" role="status" aria-live="polite">
      {message ?? ''}
    </p>
  );
}
