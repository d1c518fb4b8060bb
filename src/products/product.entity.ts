import { Column, Entity, JoinColumn, ManyToOne, Unique } from 'typeorm';
import { BigIdColumn, InsertedAtColumn, UpdatedAtColumn } from '../database/columns';
import type { ExtensionSettings } from '../common/extensions/extension-settings';
import { Org } from '../orgs/org.entity';

export const UPDATE_TOOLS = ['fwup', 'atomvm', 'esp-idf'] as const;
export type UpdateTool = (typeof UPDATE_TOOLS)[number];

@Entity('products')
@Unique('products_org_id_name_key', ['orgId', 'name'])
export class Product {
  @BigIdColumn()
  id: string;

  @Column({ name: 'org_id', type: 'bigint' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id' })
  org?: Org;

  @Column({ type: 'varchar', length: 255 })
  name: string;

  @Column({ name: 'allow_unsigned_atomvm_firmware', type: 'boolean', default: false })
  allowUnsignedAtomvmFirmware: boolean;

  @Column({ name: 'allow_unsigned_esp_idf_firmware', type: 'boolean', default: false })
  allowUnsignedEspIdfFirmware: boolean;

  @Column({ name: 'allowed_update_tools', type: 'text', array: true, default: () => "'{fwup}'" })
  allowedUpdateTools: UpdateTool[];

  @Column({ name: 'require_unique_firmware_version', type: 'boolean', default: true })
  requireUniqueFirmwareVersion: boolean;

  /** Which extensions the product enables (NervesHub's product `extensions`); see ExtensionSettings. */
  @Column({
    type: 'jsonb',
    default: () =>
      `'{"geo": false, "health": false, "logging": false, "local_shell": false, "network_identity": true}'`,
  })
  extensions: ExtensionSettings;

  @InsertedAtColumn()
  insertedAt: Date;

  @UpdatedAtColumn()
  updatedAt: Date;
}
