/** A server-paged list's pager: previous and next page, and the page size (each change a new URL, via `go`). */
export function Pager(props: {
  page: number;
  totalPages: number;
  pageSize: number;
  pageSizes: readonly number[];
  /** The page size select's id (unique on the page, for its label). */
  sizeId: string;
  go: (change: { page?: string; page_size?: string }) => void;
}) {
  const { page, totalPages, go } = props;
  return (
    <nav class="pager" aria-label="Pages">
      <button
        type="button"
        class="secondary"
        disabled={page <= 1}
        onClick={() => go({ page: String(page - 1) })}
      >
        Previous page
      </button>
      <button
        type="button"
        class="secondary"
        disabled={page >= totalPages}
        onClick={() => go({ page: String(page + 1) })}
      >
        Next page
      </button>
      <label for={props.sizeId}>Per page</label>
      <select
        id={props.sizeId}
        value={String(props.pageSize)}
        onChange={(event) => go({ page_size: event.currentTarget.value })}
      >
        {props.pageSizes.map((size) => (
          <option key={size} value={String(size)}>
            {size}
          </option>
        ))}
      </select>
    </nav>
  );
}
