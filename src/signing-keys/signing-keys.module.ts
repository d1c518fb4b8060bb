import { Module } from '@nestjs/common';
import { OrgsModule } from '../orgs/orgs.module';
import { SigningKeysController } from './signing-keys.controller';
import { SigningKeysRepository } from './signing-keys.repository';
import { SigningKeysService } from './signing-keys.service';

@Module({
  imports: [OrgsModule],
  controllers: [SigningKeysController],
  providers: [SigningKeysService, SigningKeysRepository],
  exports: [SigningKeysService],
})
export class SigningKeysModule {}
