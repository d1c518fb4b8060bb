/** Field messages every feature repeats (NervesHub's wording, contract section 3). */

/** A unique value (name, identifier, uuid, version) that another record holds already. */
export const ALREADY_TAKEN = 'has already been taken';

/** A required value that is missing or empty. */
export const BLANK = "can't be blank";
