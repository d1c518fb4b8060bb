/** The device a report comes from, as the device gateway knows it from its authenticated connection. */
export interface ReportingDevice {
  id: string;
  orgId: string;
  identifier: string;
}

/** One entry of a device's `network_identity:report` for the iroh service (device input: checked). */
export interface ReportedIdentity {
  identifier: string;
  instance?: string;
  details?: object;
}

export type IdentityOutcome = 'created' | 'updated' | 'claimed' | 'refused' | 'skipped';

/**
 * Why a report was refused or skipped. The gateway may log these; they are never sent to other
 * organizations.
 */
export type IdentityReason =
  | 'invalid_identifier'
  | 'invalid_instance'
  | 'invalid_details'
  | 'too_many_identities'
  | 'held_by_member'
  | 'held_by_another_device'
  | 'held_under_another_instance'
  | 'held_by_another_service'
  | 'held_by_another_organization'
  | 'device_not_found';

export interface IdentityReportResult {
  /** The lower-cased endpoint id; for a skipped entry, what the device sent (null when not a string). */
  identifier: string | null;
  instance: string | null;
  outcome: IdentityOutcome;
  reason?: IdentityReason;
}
