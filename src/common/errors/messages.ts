export const ALREADY_TAKEN = 'has already been taken';
export const BLANK = "can't be blank";
