import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import { navigate, seg } from '../router';
import { allows } from '../session';
import { ErrorAlert } from './alert';
import { ConfirmDialog } from './confirm-dialog';

/**
 * Moves the device to another product, of this organization or of another one the member manages
 * (`POST .../devices/{identifier}/move`), after a confirmation that says what the move does; then shows the
 * device at its new address. Offered to manage members only (the page decides).
 */
export function DeviceMove(props: { org: string; product: string; identifier: string }) {
  const { org, product, identifier } = props;
  const [orgs, setOrgs] = useState<string[] | null>(null);
  const [targetOrg, setTargetOrg] = useState('');
  const [products, setProducts] = useState<string[] | null>(null);
  const [targetProduct, setTargetProduct] = useState('');
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let newest = true;
    void api.GET('/api/orgs').then(({ data }) => {
      if (!newest) return;
      const manageable = (data?.data ?? []).filter((o) => allows(o.role, 'manage')).map((o) => o.name);
      setOrgs(manageable);
      setTargetOrg(manageable.includes(org) ? org : (manageable[0] ?? ''));
    });
    return () => {
      newest = false;
    };
  }, [org]);

  useEffect(() => {
    setProducts(null);
    setTargetProduct('');
    if (targetOrg === '') return;
    let newest = true;
    void api
      .GET('/api/orgs/{org_name}/products', { params: { path: { org_name: targetOrg } } })
      .then(({ data }) => {
        if (!newest) return;
        const names = (data?.data ?? [])
          .map((p) => p.name)
          .filter((name) => !(targetOrg === org && name === product));
        setProducts(names);
        setTargetProduct(names[0] ?? '');
      });
    return () => {
      newest = false;
    };
  }, [org, product, targetOrg]);

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
        <label for="move-org">Organization</label>
        <select id="move-org" value={targetOrg} onChange={(e) => setTargetOrg(e.currentTarget.value)}>
          {(orgs ?? []).map((name) => (
            <option key={name} value={name}>
              {name}
            </option>
          ))}
        </select>
        <label for="move-product">Product</label>
        <select
          id="move-product"
          value={targetProduct}
          onChange={(e) => setTargetProduct(e.currentTarget.value)}
        >
          {(products ?? []).map((name) => (
            <option key={name} value={name}>
              {name}
            </option>
          ))}
        </select>
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
