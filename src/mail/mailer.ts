import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { createTransport, type Transporter } from 'nodemailer';
import { APP_CONFIG, type AppConfig } from '../config/config';

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

/**
 * Outgoing mail through the SMTP server of FLEETHUB_SMTP_URL (nodemailer), when one is configured. Sending is
 * best effort: a failure is logged and answered `false`, never thrown, since what a mail tells (an invitation's
 * link) can always be read from the API too.
 */
@Injectable()
export class Mailer implements OnModuleDestroy {
  private readonly logger = new Logger(Mailer.name);
  private transport: Transporter | null = null;

  constructor(@Inject(APP_CONFIG) private readonly config: Pick<AppConfig, 'smtp'>) {}

  get enabled(): boolean {
    return this.config.smtp !== null;
  }

  async send(mail: Mail): Promise<boolean> {
    const smtp = this.config.smtp;
    if (!smtp) return false;
    try {
      this.transport ??= createTransport(smtp.url, { from: smtp.from });
      await this.transport.sendMail(mail);
      return true;
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'mail not sent');
      return false;
    }
  }

  onModuleDestroy(): void {
    this.transport?.close();
  }
}
