/** The header of a table's actions column: named for screen readers, blank on screen. */
export function ActionsHeader() {
  return (
    <th scope="col">
      <span class="visually-hidden">Actions</span>
    </th>
  );
}
