import { seg } from '../router';
import { Link } from './link';

/** The sections of one product. */
export function ProductNav(props: {
  org: string;
  product: string;
  current: 'overview' | 'devices' | 'deployments' | 'firmware' | 'scripts' | 'settings';
}) {
  const base = `/orgs/${seg(props.org)}/products/${seg(props.product)}`;
  return (
    <nav class="tabs" aria-label={`Product ${props.product}`}>
      <Link href={base} current={props.current === 'overview'}>
        Overview
      </Link>
      <Link href={`${base}/devices`} current={props.current === 'devices'}>
        Devices
      </Link>
      <Link href={`${base}/deployments`} current={props.current === 'deployments'}>
        Deployment groups
      </Link>
      <Link href={`${base}/firmware`} current={props.current === 'firmware'}>
        Firmware
      </Link>
      <Link href={`${base}/scripts`} current={props.current === 'scripts'}>
        Support scripts
      </Link>
      <Link href={`${base}/settings`} current={props.current === 'settings'}>
        Settings
      </Link>
    </nav>
  );
}
