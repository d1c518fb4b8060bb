import { Module } from '@nestjs/common';
import { SigningKeysController } from './signing-keys.controller';
import { SigningKeysService } from './signing-keys.service';

@Module({
  controllers: [SigningKeysController],
  providers: [SigningKeysService],
  exports: [SigningKeysService],
})
export class SigningKeysModule {}
