import { Init1795322356360 } from './1795322356360-Init';
import { DeviceCounters1795323774833 } from './1795323774833-DeviceCounters';

// Every migration, in order. Add new ones at the end; never edit one that has landed.
export const MIGRATIONS: Function[] = [Init1795322356360, DeviceCounters1795323774833];
