import { useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import { navigate, seg } from '../router';
import { ErrorAlert } from './alert';
import { ConfirmDialog } from './confirm-dialog';
import { MoveTargetFields, useMoveTarget } from './move-target';

/**
 * Moves the device to another product, of this organization or of another one the member manages
 * (`POST .../devices/{identifier}/move`), after a confirmation that says what the move does; then shows the
 * device at its new address. Offered to manage members only (the page decides).
 */
export function DeviceMove(props: { org: string; product: string; identifier: string }) {
  const { org, product, identifier } = props;
  const target = useMoveTarget(org, product);
  const { targetOrg, targetProduct, products } = target;
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const move = async () => {
    setBusy(true);
    setError(null);
    const { error: failure, response } = await api.POST(
      '/api/orgs/{org_name}/products/{product_name}/devices/{identifier}/move',
      {
        params: { path: { org_name: org, product_name: product, identifier } },
        body: { new_org_name: targetOrg, new_product_name: targetProduct },
      },
    );
    setBusy(false);
    setConfirming(false);
    if (response.ok) {
      navigate(`/orgs/${seg(targetOrg)}/products/${seg(targetProduct)}/devices/${seg(identifier)}`);
    } else setError(errorText(failure, response.status));
  };

  return (
    <form
      class="device-move"
      onSubmit={(event) => {
        event.preventDefault();
        setError(null);
        setConfirming(true);
      }}
    >
      <fieldset>
        <legend>Move to another product</legend>
        <MoveTargetFields idPrefix="move" target={target} />
        {products !== null && products.length === 0 && (
          <p class="hint">No other product to move it to in this organization.</p>
        )}
        <button type="submit" class="secondary" disabled={targetProduct === ''}>
          Move…
        </button>
      </fieldset>
      <ErrorAlert message={error} />
      <ConfirmDialog
        open={confirming}
        title={`Move ${identifier}`}
        confirmLabel="Move the device"
        danger
        busy={busy}
        onConfirm={() => void move()}
        onCancel={() => setConfirming(false)}
      >
        <p>
          Move {identifier} to {targetOrg}/{targetProduct}? It leaves its deployment group and any update not
          yet delivered, keeps its identity and certificates, and reconnects.
        </p>
      </ConfirmDialog>
    </form>
  );
}
