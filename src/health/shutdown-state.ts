import { Injectable } from '@nestjs/common';

/** Set when the process has been asked to stop: /readyz then fails so that balancers stop routing here. */
@Injectable()
export class ShutdownState {
  draining = false;
}
