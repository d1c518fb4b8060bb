import { Module } from '@nestjs/common';
import { MembershipsRepository } from './memberships.repository';
import { OrgsController } from './orgs.controller';
import { OrgsRepository } from './orgs.repository';
import { OrgsService } from './orgs.service';

@Module({
  controllers: [OrgsController],
  providers: [OrgsRepository, MembershipsRepository, OrgsService],
  exports: [OrgsService, MembershipsRepository],
})
export class OrgsModule {}
