import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

/**
 * A modal question (the browser's `<dialog>`: focus stays inside, Escape cancels). Cancel has the focus when it
 * opens, so that Enter never confirms a change by accident.
 */
export function ConfirmDialog(props: {
  open: boolean;
  title: string;
  confirmLabel: string;
  busy?: boolean;
  danger?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
  children: ComponentChildren;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const cancel = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    const element = dialog.current;
    if (!element) return;
    if (props.open && !element.open) {
      element.showModal();
      cancel.current?.focus();
    }
    if (!props.open && element.open) element.close();
  }, [props.open]);
  return (
    <dialog
      ref={dialog}
      class="confirm"
      aria-labelledby="confirm-title"
      aria-describedby="confirm-body"
      onCancel={(event) => {
        event.preventDefault();
        if (!props.busy) props.onCancel();
      }}
    >
      <h2 id="confirm-title">{props.title}</h2>
      <div id="confirm-body">{props.children}</div>
      <div class="actions">
        <button ref={cancel} type="button" class="secondary" disabled={props.busy} onClick={props.onCancel}>
          Cancel
        </button>
        <button
          type="button"
          class={props.danger ? 'danger' : undefined}
          disabled={props.busy}
          onClick={props.onConfirm}
        >
          {props.busy ? 'Working…' : props.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}
