import { Module } from '@nestjs/common';
import { IrohController } from './iroh.controller';
import { IrohService } from './iroh.service';

@Module({
  controllers: [IrohController],
  providers: [IrohService],
  exports: [IrohService],
})
export class IrohModule {}
