import { Module } from '@nestjs/common';
import { MembersModule } from '../members/members.module';
import { IrohController } from './iroh.controller';
import { IrohClaimsService } from './iroh-claims.service';
import { IrohEndpointsRepository } from './iroh-endpoints.repository';
import { IrohService } from './iroh.service';

@Module({
  imports: [MembersModule],
  controllers: [IrohController],
  providers: [IrohEndpointsRepository, IrohService, IrohClaimsService],
  // IrohEndpointsRepository: for `fleethub demo`, which inserts its made-up endpoints in bulk.
  exports: [IrohService, IrohClaimsService, IrohEndpointsRepository],
})
export class IrohModule {}
