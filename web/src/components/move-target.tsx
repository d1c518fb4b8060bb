import { useEffect, useState } from 'preact/hooks';
import { api } from '../api/client';
import { allows } from '../session';

/** Where devices may move: the organizations the member manages, and their products other than the current one. */
export interface MoveTarget {
  orgs: string[] | null;
  targetOrg: string;
  setTargetOrg: (org: string) => void;
  /** null while they load. */
  products: string[] | null;
  targetProduct: string;
  setTargetProduct: (product: string) => void;
}

/**
 * The move's target, loaded once `enabled` (the member's manageable organizations, this one first; then the chosen
 * organization's products, the device's own left out).
 */
export function useMoveTarget(org: string, product: string, enabled = true): MoveTarget {
  const [orgs, setOrgs] = useState<string[] | null>(null);
  const [targetOrg, setTargetOrg] = useState('');
  const [products, setProducts] = useState<string[] | null>(null);
  const [targetProduct, setTargetProduct] = useState('');

  useEffect(() => {
    if (!enabled) return;
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
  }, [org, enabled]);

  useEffect(() => {
    setProducts(null);
    setTargetProduct('');
    if (!enabled || targetOrg === '') return;
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
  }, [org, product, targetOrg, enabled]);

  return { orgs, targetOrg, setTargetOrg, products, targetProduct, setTargetProduct };
}

/** The organization and product pickers of a move (`<idPrefix>-org`, `<idPrefix>-product`). */
export function MoveTargetFields(props: { idPrefix: string; target: MoveTarget }) {
  const { idPrefix, target } = props;
  return (
    <>
      <label for={`${idPrefix}-org`}>Organization</label>
      <select
        id={`${idPrefix}-org`}
        value={target.targetOrg}
        onChange={(e) => target.setTargetOrg(e.currentTarget.value)}
      >
        {(target.orgs ?? []).map((name) => (
          <option key={name} value={name}>
            {name}
          </option>
        ))}
      </select>
      <label for={`${idPrefix}-product`}>Product</label>
      <select
        id={`${idPrefix}-product`}
        value={target.targetProduct}
        onChange={(e) => target.setTargetProduct(e.currentTarget.value)}
      >
        {(target.products ?? []).map((name) => (
          <option key={name} value={name}>
            {name}
          </option>
        ))}
      </select>
    </>
  );
}
